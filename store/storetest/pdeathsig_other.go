//go:build !linux

package storetest

import "os/exec"

// dieWithParent is Linux-only; elsewhere the test's cleanup stops cmd.
func dieWithParent(*exec.Cmd) {}
