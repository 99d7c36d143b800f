package hub

import (
	"strings"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// authConflict is the error of a request that both removes the billed keys
// (AuthLogin) and sets one in Request.Env.
func authConflict(req Request) *events.Error {
	if req.Auth != grant.AuthLogin {
		return nil
	}
	for _, kv := range req.Env {
		if grant.IsBilledKey(kv) {
			k, _, _ := strings.Cut(kv, "=")
			return events.NewError(events.BinInvalidInput, events.ReasonConflict,
				"drop --env "+k+"=… to use the saved login, or use --auth inherit to use the key",
				"--auth login removes billed API keys from the agent's environment, but --env sets %s", k)
		}
	}
	return nil
}

// loginHint is the hint of a run that failed to authenticate with
// AuthLogin: the keys were removed on purpose, so the next step is the
// CLI's own login.
func loginHint(info adapters.Info) string {
	login := info.LoginHint
	if login == "" {
		login = "log in with " + info.Name + "'s own login command"
	}
	return login + " (--auth login removed the API keys from its environment so that its saved login is used; --auth inherit uses a key)"
}
