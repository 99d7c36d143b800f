package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/grant"

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
    # The value of a flag: its choices, or files (an empty reply falls
    # back to bash's own completion), never hub's flags.
    case "${words[${#words[@]}-1]}" in
@@VALUES@@
    esac
    # The words go to hub as they were typed, never through eval: a
    # redirection or $(…) on the line is a word, not a command.
    if [[ "$cur" == "-"* ]]; then
      opts=$("${words[0]}" "${words[@]:1}" "${cur}" --generate-bash-completion 2>/dev/null)
    else
      opts=$("${words[0]}" "${words[@]:1}" --generate-bash-completion 2>/dev/null)
    fi
    COMPREPLY=($(compgen -W "${opts}" -- "${cur}"))
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
  # The value of a flag: its choices, or files; never hub's flags.
  case "${words[-2]}" in
@@ZVALUES@@
  esac
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
				script = strings.Replace(bashCompletion, "@@VALUES@@", valueCases(bashValues), 1)
			case "zsh":
				script = strings.Replace(zshCompletion, "@@ZVALUES@@", valueCases(zshValues), 1)
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

// flagChoices are the values of hub's flags that take one of a few words.
func flagChoices() map[string][]string {
	levels := make([]string, len(grant.Levels))
	for i, l := range grant.Levels {
		levels[i] = string(l)
	}
	return map[string][]string{
		"agent":      adapters.Names(),
		"permission": levels,
		"output":     {"text", "jsonl", "json", "answer"},
		"sandbox":    {"none", "copy", "worktree"},
		"color":      {"auto", "always", "never"},
		"auth":       {"inherit", "login"},
	}
}

// valueCases is the case arms of a completion script for the flags of hub
// run (and the commands that share them) that take a value, one arm per
// flag as the previous word: its choices (arm), files for a flag that
// takes a file, nothing for the others (a number, a duration, a text).
func valueCases(arm func(flags string, choices []string, files bool) string) string {
	choices := flagChoices()
	var b strings.Builder
	for _, f := range runFlags() {
		if !f.(cli.DocGenerationFlag).TakesValue() {
			continue
		}
		name := f.Names()[0]
		files := false
		if sf, ok := f.(*cli.StringFlag); ok {
			files = sf.TakesFile
		}
		b.WriteString(arm("--"+name, choices[name], files))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func bashValues(flag string, choices []string, files bool) string {
	if len(choices) > 0 {
		return fmt.Sprintf("      %s) COMPREPLY=($(compgen -W %q -- \"${cur}\")); return 0 ;;\n", flag, strings.Join(choices, " "))
	}
	return fmt.Sprintf("      %s) COMPREPLY=(); return 0 ;;\n", flag) // files, or nothing
}

func zshValues(flag string, choices []string, files bool) string {
	switch {
	case len(choices) > 0:
		return fmt.Sprintf("    %s) compadd -- %s; return ;;\n", flag, strings.Join(slices.Clone(choices), " "))
	case files:
		return fmt.Sprintf("    %s) _files; return ;;\n", flag)
	}
	return fmt.Sprintf("    %s) return ;;\n", flag)
}
