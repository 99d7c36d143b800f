// Command benchgen writes a large transcript shaped like an agent's recorded
// ones (see package benchgen), for scripts/bench.sh:
//
//	go run ./hubtest/benchgen/cmd/benchgen -agent claude -text code -size 500M -o /tmp/claude.jsonl
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hubcli/hub/hubtest/benchgen"
)

func main() {
	agent := flag.String("agent", "", "agent: "+strings.Join(benchgen.Agents, ", "))
	size := flag.String("size", "500M", "at least this many bytes (suffix K, M or G: powers of 1024)")
	out := flag.String("o", "", "output file")
	seed := flag.Uint64("seed", 1, "random seed")
	text := flag.String("text", "code", "text in answers and tool outputs: code (an escape every ~14 bytes) or logs (every ~65)")
	flag.Parse()
	n, err := parseSize(*size)
	kind, ok := benchgen.Texts[*text]
	if err != nil || *out == "" || !ok {
		fmt.Fprintln(os.Stderr, "usage: benchgen -agent NAME [-text code|logs] -size 500M -o FILE")
		os.Exit(2)
	}
	f, err := os.Create(*out)
	if err == nil {
		_, err = benchgen.Generate(f, *agent, kind, n, *seed)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}
