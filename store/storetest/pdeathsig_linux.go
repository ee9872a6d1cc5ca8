package storetest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill cmd if the test binary dies first (a
// test timeout's panic skips cleanups), so no pooler outlives its test.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
