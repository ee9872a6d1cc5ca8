package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// releaseStartupPages hands back to the kernel the pages of the server's
// own executable that start-up read: migrations, templates, the SDKs'
// registrations and tables run once and are never touched again, yet their
// code and read-only data stay mapped, and the kernel maps the neighbours
// of every page it faults in too. After MADV_PAGEOUT only the pages serving
// touches come back. The pages are clean copies of the file, so nothing is
// lost: a page needed again is read back in. The same ranges are then
// advised as read at random: a page serving faults back in comes alone,
// not with the readahead window around it, so the neighbours the kernel
// maps with it are only those still cached (the binary's resident pages
// with 1,000 streams open in TestStreamsMemory: 20 MB instead of 24).
// The writable mappings (Go's data and heap) are left alone. It returns
// the bytes paged out; kernels before 5.4 refuse the advice and nothing
// changes.
func releaseStartupPages() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer maps.Close()
	ranges, err := readOnlyMappings(maps, exe)
	if err != nil {
		return 0, err
	}
	n, err := advise(ranges, unix.MADV_PAGEOUT)
	if err != nil {
		return n, err
	}
	_, err = advise(ranges, unix.MADV_RANDOM)
	return n, err
}

type mapping struct{ lo, hi uintptr }

// advise gives advice on each of ranges, and returns the bytes advised
// before an error.
func advise(ranges []mapping, advice int) (int, error) {
	advised := 0
	for _, r := range ranges {
		// The raw call: the range is the binary's mapping, not memory Go
		// allocated, and a []byte over it would take an unsafe conversion.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, r.lo, r.hi-r.lo, uintptr(advice)); errno != 0 {
			return advised, fmt.Errorf("madvise %#x-%#x: %w", r.lo, r.hi, errno)
		}
		advised += int(r.hi - r.lo)
	}
	return advised, nil
}

// readOnlyOf says whether the fields of a maps (or smaps) mapping line
// are a mapping of path the process cannot write.
func readOnlyOf(f []string, path string) bool {
	return len(f) == 6 && f[5] == path && !strings.Contains(f[1], "w")
}

// readOnlyMappings are the address ranges of path's mappings in a
// /proc/<pid>/maps listing that the process cannot write: its code and
// read-only data.
func readOnlyMappings(maps io.Reader, path string) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		// address perms offset dev inode path
		f := strings.Fields(sc.Text())
		if !readOnlyOf(f, path) {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("maps: address %q", f[0])
		}
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || h <= l {
			return nil, fmt.Errorf("maps: address %q", f[0])
		}
		out = append(out, mapping{uintptr(l), uintptr(h)})
	}
	return out, sc.Err()
}
