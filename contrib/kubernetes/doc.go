// Package kubernetes holds no code: it is the module of the test that checks
// the Kubernetes Job recipe beside it (job.yaml, Dockerfile, README.md)
// against hub's own exit codes and retry rule (package events) and the
// pinned agent CLIs of scripts/install-agents.sh.
package kubernetes
