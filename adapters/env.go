package adapters

import (
	"os"
	"strings"
)

// Getenv returns the value of key in env (K=V pairs such as Request.Env;
// the last one wins), else in hub's own environment, as the agent will see
// it (Request.Env is applied on top of hub's environment).
func Getenv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return os.Getenv(key)
}
