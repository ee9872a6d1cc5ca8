//go:build !linux

package main

// releaseStartupPages does nothing where the kernel has no MADV_PAGEOUT.
func releaseStartupPages() (int, error) { return 0, nil }
