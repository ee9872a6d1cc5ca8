package main

import (
	"bufio"
	"errors"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadOnlyMappingsAreTheBinarysCodeAndConstants(t *testing.T) {
	const exe = "/srv/switchyard"
	listing := strings.Join([]string{
		"00400000-01a5a000 r-xp 00000000 fd:01 4242 /srv/switchyard",
		"01a5a000-03a00000 r--p 0165a000 fd:01 4242 /srv/switchyard",
		"03a00000-03a40000 rw-p 03600000 fd:01 4242 /srv/switchyard",
		"03a40000-05a00000 rw-p 00000000 00:00 0 ",
		"7f0000000000-7f0000021000 r-xp 00000000 fd:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6",
		"7f0000100000-7f0000200000 r-xp 00000000 fd:01 4242 /srv/switchyard (deleted)",
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]",
	}, "\n")
	got, err := readOnlyMappings(strings.NewReader(listing), exe)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{{0x400000, 0x1a5a000}, {0x1a5a000, 0x3a00000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("mappings %x, want the code and read-only data only: %x", got, want)
	}
	if _, err := readOnlyMappings(strings.NewReader("zz-01 r-xp 0 fd:01 1 /srv/switchyard"), exe); err == nil {
		t.Fatal("a malformed address was taken")
	}
}

// The pages start-up brought in leave the process's RSS: the test binary's
// code and constants, all made resident first, are mostly gone after, and
// are marked as read at random, so what comes back comes without readahead.
func TestReleaseStartupPagesShrinksTheBinarysResidentSet(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := readOnlyMappings(f, exe)
	f.Close()
	if err != nil || len(ranges) == 0 {
		t.Fatalf("no mappings of %s: %v", exe, err)
	}
	if _, err := advise(ranges, unix.MADV_POPULATE_READ); err != nil {
		t.Fatalf("populate: %v", err)
	}
	size, before, _ := mappedKB(t, exe)
	if before < size*9/10 {
		t.Fatalf("populated: %d of %d kB resident", before, size)
	}
	advised, err := releaseStartupPages()
	if errors.Is(err, unix.EINVAL) {
		if os.Getenv("CI") != "" {
			t.Fatalf("this kernel has no MADV_PAGEOUT (Linux 5.4+): %v", err) // CI must run it, never skip it quietly
		}
		t.Skipf("this kernel has no MADV_PAGEOUT: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if advised != size*1024 {
		t.Errorf("advised %d bytes of %d kB", advised, size)
	}
	_, after, random := mappedKB(t, exe)
	if after > size/4 {
		t.Fatalf("after release: %d of %d kB still resident (%d before)", after, size, before)
	}
	if random != len(ranges) {
		t.Fatalf("%d of %d mappings advised as read at random (VmFlags rr)", random, len(ranges))
	}
}

// mappedKB sums the size and resident set of exe's read-only mappings,
// from /proc/self/smaps, and counts those advised as read at random.
func mappedKB(t *testing.T, exe string) (size, rss, random int) {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":"):
			in = readOnlyOf(fs, exe)
		case in && len(fs) == 3 && (fs[0] == "Size:" || fs[0] == "Rss:"):
			n, _ := strconv.Atoi(fs[1])
			if fs[0] == "Size:" {
				size += n
			} else {
				rss += n
			}
		case in && len(fs) > 0 && fs[0] == "VmFlags:" && slices.Contains(fs[1:], "rr"):
			random++
		}
	}
	return size, rss, random
}
