// Command fakeagent is package fakeagent as a program of its own, for tests
// that want the fake agent built as users' binaries are (without the race
// detector, whose shadow memory would count in a memory measure). The
// environment selects the dialect and the fault; see package fakeagent.
package main

import (
	"os"

	"github.com/hubcli/hub/hubtest/fakeagent"
)

func main() {
	os.Exit(fakeagent.Main(os.Args[1:]))
}
