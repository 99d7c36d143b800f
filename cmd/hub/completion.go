package main

import (
	"io"

	"github.com/urfave/cli/v2"
)

// Shell completion. The app sets EnableBashCompletion: urfave/cli then
// answers a command line that ends in --generate-bash-completion with the
// commands, or the flags of the command when the word being completed
// starts with -. The bash and zsh scripts ask hub that way; they are
// urfave/cli v2.27.7's autocomplete/bash_autocomplete and
// autocomplete/zsh_autocomplete (MIT licence) with the program name fixed
// to hub, so that `source <(hub completion bash)` works (the upstream bash
// script takes the name from the file it is sourced from, /dev/fd/63
// there), and with a bash fallback for machines without the
// bash-completion package (upstream's calls its _get_comp_words_by_ref). The fish script
// is generated from the commands and flags (fishCompletion).

const bashCompletion = `# bash completion for hub: source <(hub completion bash)
# From urfave/cli v2.27.7 autocomplete/bash_autocomplete (MIT licence),
# made to work without the bash-completion package too.

# Macs have bash3 for which the bash-completion package doesn't include
# _init_completion. This is a minimal version of that function; without
# bash-completion at all, the words are taken as bash split them.
_hub_cli_init_completion() {
  COMPREPLY=()
  if declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
    _get_comp_words_by_ref "$@" cur prev words cword
  else
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur="${COMP_WORDS[COMP_CWORD]}"
  fi
}

_hub_cli_bash_autocomplete() {
  if [[ "${COMP_WORDS[0]}" != "source" ]]; then
    local cur opts base words cword
    COMPREPLY=()
    cur="${COMP_WORDS[COMP_CWORD]}"
    if declare -F _init_completion >/dev/null 2>&1; then
      _init_completion -n "=:" || return
    else
      _hub_cli_init_completion -n "=:" || return
    fi
    words=("${words[@]:0:$cword}")
    if [[ "$cur" == "-"* ]]; then
      requestComp="${words[*]} ${cur} --generate-bash-completion"
    else
      requestComp="${words[*]} --generate-bash-completion"
    fi
    opts=$(eval "${requestComp}" 2>/dev/null)
    COMPREPLY=($(compgen -W "${opts}" -- ${cur}))
    return 0
  fi
}

complete -o bashdefault -o default -o nospace -F _hub_cli_bash_autocomplete hub
`

const zshCompletion = `#compdef hub
# zsh completion for hub: source <(hub completion zsh), after compinit.
# From urfave/cli v2.27.7 autocomplete/zsh_autocomplete (MIT licence).

_hub_cli_zsh_autocomplete() {
  local -a opts
  local cur
  cur=${words[-1]}
  if [[ "$cur" == "-"* ]]; then
    opts=("${(@f)$(${words[@]:0:#words[@]-1} ${cur} --generate-bash-completion)}")
  else
    opts=("${(@f)$(${words[@]:0:#words[@]-1} --generate-bash-completion)}")
  fi

  if [[ "${opts[1]}" != "" ]]; then
    _describe 'values' opts
  else
    _files
  fi
}

compdef _hub_cli_zsh_autocomplete hub
`

const completionDescription = `Prints a script that completes hub's commands and flags in the shell named.
   bash:  source <(hub completion bash)     (in ~/.bashrc; needs bash-completion for best results)
   zsh:   source <(hub completion zsh)      (in ~/.zshrc, after compinit)
   fish:  hub completion fish > ~/.config/fish/completions/hub.fish`

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:         "completion",
		Usage:        "print a shell completion script: bash, zsh or fish",
		ArgsUsage:    "bash|zsh|fish",
		Description:  completionDescription,
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("completion takes one shell (bash, zsh or fish), got %d arguments", c.NArg())
			}
			var script string
			switch shell := c.Args().First(); shell {
			case "bash":
				script = bashCompletion
			case "zsh":
				script = zshCompletion
			case "fish":
				s, err := fishCompletion()
				if err != nil {
					return err
				}
				script = s
			default:
				return usagef("completion: unknown shell %q (bash, zsh or fish)", shell)
			}
			_, err := io.WriteString(c.App.Writer, script)
			return err
		},
	}
}

// fishCompletion is the fish script, generated (App.ToFishCompletion) from
// an app that has never run: urfave/cli's help command is one value shared
// by every app, and running it (`hub help run`) appends it to its own
// subcommands, a cycle ToFishCompletion would follow forever. The app
// gets a help command of its own instead.
func fishCompletion() (string, error) {
	app := newApp(nil, nil, nil, nil)
	app.HideHelpCommand = true
	app.HideVersion = true // hub has its own --version; urfave's would add a -v that hub refuses
	app.Commands = append(app.Commands, &cli.Command{Name: "help", Aliases: []string{"h"}, Usage: "show the commands, or one command's help"})
	return app.ToFishCompletion()
}
