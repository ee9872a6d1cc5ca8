//go:build unix

package storetest

import (
	"errors"
	"syscall"
)

// pidAlive reports whether a process with that pid exists (EPERM: it does,
// owned by someone else).
func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
