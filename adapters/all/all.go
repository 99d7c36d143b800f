// Package all registers every agent adapter hub ships. Import it for its
// side effect: _ "github.com/hubcli/hub/adapters/all".
package all

import (
	_ "github.com/hubcli/hub/adapters/acp"      // registers "acp"
	_ "github.com/hubcli/hub/adapters/claude"   // registers "claude"
	_ "github.com/hubcli/hub/adapters/codex"    // registers "codex"
	_ "github.com/hubcli/hub/adapters/opencode" // registers "opencode"
	_ "github.com/hubcli/hub/adapters/pi"       // registers "pi"
)
