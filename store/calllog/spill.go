package calllog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Spill directory layout:
//
//	spill-active.jsonl       records appended now (one JSON Record per line)
//	spill-<unixnano>.jsonl   sealed files waiting for replay, oldest first
//	dead-letter.jsonl        records PostgreSQL refused and lines that do not parse
//
// Only sealed files are replayed, so appends never race with the reader.
// A sealed file is removed only after its last line was committed; a crash
// before that replays it again from the start, which ON CONFLICT makes
// harmless.
const (
	activeName     = "spill-active.jsonl"
	sealedPrefix   = "spill-"
	sealedSuffix   = ".jsonl"
	deadLetterName = "dead-letter.jsonl"
)

type spool struct {
	dir string

	mu         sync.Mutex // guards the active file and sealing
	active     *os.File
	activeSize int64
	dirty      bool // appended since the last fsync
	lastSeal   int64

	bytes atomic.Int64 // spilled bytes not yet replayed

	// Replay state, used only by the writer's goroutine.
	cur       *os.File
	rd        *bufio.Reader
	committed int64 // offset of the first line not yet stored
	pos       int64 // offset after the lines handed out by next
	deadUpTo  int64 // lines before this offset were already dead-lettered
	eof       bool

	deadMu sync.Mutex
}

func openSpool(dir string) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("calllog: spill dir: %w", err)
	}
	s := &spool{dir: dir}
	// A previous process's active file is sealed so it gets replayed.
	if fi, err := os.Stat(filepath.Join(dir, activeName)); err == nil {
		if fi.Size() == 0 {
			_ = os.Remove(filepath.Join(dir, activeName))
		} else if err := s.renameActive(); err != nil {
			return nil, err
		}
	}
	names, err := s.sealed()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("calllog: spill: %w", err)
		}
		s.bytes.Add(fi.Size())
	}
	return s, nil
}

// append writes recs to the active file; with sync it also fsyncs, otherwise
// the writer's loop fsyncs it within one flush interval.
func (s *spool) append(recs []Record, sync bool) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("calllog: spill encode: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		f, err := os.OpenFile(filepath.Join(s.dir, activeName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("calllog: spill open: %w", err)
		}
		fi, err := f.Stat()
		if err != nil {
			_ = f.Close()
			return fmt.Errorf("calllog: spill open: %w", err)
		}
		s.active, s.activeSize = f, fi.Size()
		_ = syncDir(s.dir)
	}
	n, err := s.active.Write(buf.Bytes())
	s.activeSize += int64(n)
	s.bytes.Add(int64(n))
	if err != nil {
		return fmt.Errorf("calllog: spill write: %w", err)
	}
	s.dirty = true
	if sync {
		return s.syncLocked()
	}
	return nil
}

func (s *spool) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncLocked()
}

func (s *spool) syncLocked() error {
	if s.active == nil || !s.dirty {
		return nil
	}
	if err := s.active.Sync(); err != nil {
		return fmt.Errorf("calllog: spill fsync: %w", err)
	}
	s.dirty = false
	return nil
}

// seal closes the active file and renames it for replay.
func (s *spool) seal() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil || s.activeSize == 0 {
		return nil
	}
	if err := s.syncLocked(); err != nil {
		return err
	}
	if err := s.active.Close(); err != nil {
		return fmt.Errorf("calllog: spill close: %w", err)
	}
	s.active, s.activeSize = nil, 0
	return s.renameActive()
}

func (s *spool) renameActive() error {
	// Names sort by time; never reuse one even if the clock stands still.
	stamp := max(time.Now().UnixNano(), s.lastSeal+1)
	s.lastSeal = stamp
	name := fmt.Sprintf("%s%020d%s", sealedPrefix, stamp, sealedSuffix)
	if err := os.Rename(filepath.Join(s.dir, activeName), filepath.Join(s.dir, name)); err != nil {
		return fmt.Errorf("calllog: spill seal: %w", err)
	}
	return syncDir(s.dir)
}

// sealed lists the sealed files, oldest first.
func (s *spool) sealed() ([]string, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("calllog: spill dir: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if n == activeName || !strings.HasPrefix(n, sealedPrefix) || !strings.HasSuffix(n, sealedSuffix) {
			continue
		}
		if _, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(n, sealedPrefix), sealedSuffix), 10, 64); err != nil {
			continue
		}
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// next returns up to max spilled records, continuing where the last call
// stopped. It seals the active file when no sealed file is left. It returns
// no records when nothing is spilled. Lines that are not a record (a write
// torn by a crash) are moved to the dead-letter file.
func (s *spool) next(max int) ([]Record, error) {
	if s.cur == nil {
		names, err := s.sealed()
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			if err := s.seal(); err != nil {
				return nil, err
			}
			if names, err = s.sealed(); err != nil {
				return nil, err
			}
			if len(names) == 0 {
				s.resetIfEmpty()
				return nil, nil
			}
		}
		f, err := os.Open(filepath.Join(s.dir, names[0]))
		if err != nil {
			return nil, fmt.Errorf("calllog: spill replay: %w", err)
		}
		s.cur, s.rd = f, bufio.NewReaderSize(f, 256<<10)
		s.committed, s.pos, s.deadUpTo, s.eof = 0, 0, 0, false
	}
	var recs []Record
	for len(recs) < max && !s.eof {
		line, err := s.rd.ReadBytes('\n')
		start := s.pos
		s.pos += int64(len(line))
		if errors.Is(err, io.EOF) {
			s.eof = true
		} else if err != nil {
			return nil, fmt.Errorf("calllog: spill replay: %w", err)
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			if start >= s.deadUpTo {
				s.deadLetterLine(line)
				s.deadUpTo = s.pos
			}
			continue
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// commit records that everything next handed out is stored, and removes the
// file once it is fully replayed.
func (s *spool) commit() error {
	s.bytes.Add(s.committed - s.pos)
	s.committed = s.pos
	if !s.eof || s.cur == nil {
		return nil
	}
	name := s.cur.Name()
	_ = s.cur.Close()
	s.cur, s.rd = nil, nil
	if err := os.Remove(name); err != nil {
		return fmt.Errorf("calllog: spill remove: %w", err)
	}
	return syncDir(s.dir)
}

// rewind forgets what next handed out since the last commit, so it is read
// again on the next attempt.
func (s *spool) rewind() error {
	if s.cur == nil {
		return nil
	}
	if _, err := s.cur.Seek(s.committed, io.SeekStart); err != nil {
		return fmt.Errorf("calllog: spill rewind: %w", err)
	}
	s.rd.Reset(s.cur)
	s.pos, s.eof = s.committed, false
	return nil
}

func (s *spool) pending() bool { return s.bytes.Load() > 0 }

// replaying reports whether a sealed file is open for replay.
func (s *spool) replaying() bool { return s.cur != nil }

// resetIfEmpty zeroes the byte count when no spill file exists, so that an
// accounting drift can never keep the writer replaying nothing.
func (s *spool) resetIfEmpty() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil && s.cur == nil {
		s.bytes.Store(0)
	}
}

func (s *spool) close() error {
	if s.cur != nil {
		_ = s.cur.Close()
		s.cur, s.rd = nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == nil {
		return nil
	}
	err := s.syncLocked()
	if cerr := s.active.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("calllog: spill close: %w", cerr)
	}
	s.active = nil
	return err
}

// deadLetter appends records PostgreSQL refused to the dead-letter file.
func (s *spool) deadLetter(recs []Record) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("calllog: dead-letter encode: %w", err)
		}
	}
	return s.appendDead(buf.Bytes())
}

func (s *spool) deadLetterLine(line []byte) {
	_ = s.appendDead(append(slices.Clip(line), '\n'))
}

func (s *spool) appendDead(b []byte) error {
	s.deadMu.Lock()
	defer s.deadMu.Unlock()
	f, err := os.OpenFile(filepath.Join(s.dir, deadLetterName), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("calllog: dead-letter: %w", err)
	}
	_, err = f.Write(b)
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("calllog: dead-letter: %w", err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("calllog: spill dir: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("calllog: spill dir fsync: %w", err)
	}
	return nil
}
