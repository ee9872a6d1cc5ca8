package config_test

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"switchyard/routing/config"
	"switchyard/routing/config/configtest"
)

// The canonical writer and reader (canonical_write.go, canonical_read.go)
// against the YAML library, which stays the reference: the same bytes out,
// the same snapshot (or the same refusal) in.

// awkward are strings whose YAML style depends on the emitter's rules:
// forms that resolve to other types, indicators, spaces, quotes, escapes,
// line breaks, characters the emitter escapes.
var awkward = []string{
	"", "plain", "two words", "123", "-1", "+1", "0x1F", "0o17", "0b101", "1_000", "1e3", "1.5", ".5", "-.inf", ".nan", ".NaN", ".inf",
	"true", "False", "TRUE", "yes", "No", "on", "OFF", "y", "n", "null", "Null", "~", "<<", "<", "=",
	"12:30", "1:2:3.5", "190:20:30", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5",
	" leading", "trailing ", " both ", "  ", " ", "a  b", "-", "- x", "-x", "--", "---", "--- x", "...", "... x", "?", "? x", "?x", ":", ": x", ":x",
	"a: b", "a:b", "a:", "a :", "a #b", "a#b", "#a", "# a", "a,b", ",a", "[a]", "a[b]", "{a}", "a}", "&a", "*a", "!a", "a!", "|", "|a", ">a", "a>",
	"'a", "a'b", "it's", "'", "''", "\"a", "a\"b", "\"", "a\\b", "\\", "%a", "a%", "@a", "a@b", "`a", "a`",
	"http://127.0.0.1:9/v1", "https://x.example/v1?a=b&c=d#frag", "sk-abc…1234", "query: ", "passage: ",
	"中文描述，模型", "ünïcödé", "“quotes”", "emoji 🙂", "nbsp\u00a0here", "\u00a0", "bom\ufeff", "ls\u2028ps\u2029", "nel\u0085", "c1\u0080",
	"tab\there", "\t", "line\nbreak", "ends with break\n", "\n", "two\n\nbreaks\n\n", "  indented\nmore", "cr\rhere", "crlf\r\n", "nul\x00", "bell\x07", "del\x7f",
	"bad utf8 \xff", "\xc3", "\ufffd", "\uffff", "a\u00a0", "\u00a0a",
}

// fill sets every exported field of v (a pointer) from rng: strings from
// awkward, small numbers, both booleans, lists of zero to two items,
// pointers nil or set. Fields added to the types later are filled too, so
// the comparison with the library covers them without being told.
func fill(rng *rand.Rand, v reflect.Value, str func() string) {
	switch v.Kind() {
	case reflect.Pointer:
		if rng.IntN(3) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		if rng.IntN(4) > 0 {
			fill(rng, v.Elem(), str)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && rng.IntN(4) > 0 {
				fill(rng, v.Field(i), str)
			}
		}
	case reflect.Slice:
		n := rng.IntN(3)
		if n == 0 && rng.IntN(2) == 0 {
			v.Set(reflect.Zero(v.Type()))
			return
		}
		v.Set(reflect.MakeSlice(v.Type(), n, n))
		for i := range n {
			fill(rng, v.Index(i), str)
		}
	case reflect.String:
		v.SetString(str())
	case reflect.Int, reflect.Int64:
		v.SetInt([]int64{0, 1, -1, 7, 100, 1 << 40, -1 << 40, 2_500_000}[rng.IntN(8)])
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	}
}

// variant is a random snapshot whose every field may be set.
func variant(rng *rand.Rand, str func() string) config.Snapshot {
	var s config.Snapshot
	fill(rng, reflect.ValueOf(&s).Elem(), str)
	if rng.IntN(8) > 0 {
		s.Format = config.FormatV1
	}
	return s
}

func awkwardString(rng *rand.Rand) func() string {
	return func() string {
		s := awkward[rng.IntN(len(awkward))]
		if rng.IntN(4) == 0 {
			s += awkward[rng.IntN(len(awkward))]
		}
		return s
	}
}

// checkCodec checks that Encode writes the library's bytes for s and that
// Decode reads back what the library reads.
func checkCodec(t *testing.T, name string, s config.Snapshot) {
	t.Helper()
	got, err := config.Encode(s)
	want, wantErr := config.EncodeWithLibrary(s)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: Encode error %v, library %v", name, err, wantErr)
	}
	if err != nil {
		return
	}
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: the writer's text differs from the library's at byte %d:\n%q\nvs\n%q", name, i, got[max(0, i-120):min(len(got), i+80)], want[max(0, i-120):min(len(want), i+80)])
	}
	checkDecode(t, name, got)
}

// checkDecode checks that Decode and the library agree on text.
func checkDecode(t *testing.T, name string, text []byte) {
	t.Helper()
	got, err := config.Decode(text)
	want, wantErr := config.DecodeWithLibrary(text)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("%s: Decode error %v, library %v\n%s", name, err, wantErr, text)
	}
	if err != nil {
		if err.Error() != wantErr.Error() {
			t.Fatalf("%s: Decode error %q, library %q", name, err, wantErr)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: Decode and the library read different snapshots from\n%s\n%#v\nvs\n%#v", name, text, got, want)
	}
}

// TestCanonicalWriterMatchesLibrary: generated configurations at several
// sizes, the tricky one and random variants of every field encode to the
// library's bytes, and the generated ones without the library's help.
func TestCanonicalWriterMatchesLibrary(t *testing.T) {
	sizes := map[string]configtest.Size{
		"small":  configtest.Small,
		"medium": {Tenants: 3, Providers: 12, Deployments: 400, Groups: 40, Callers: 40},
		"large":  configtest.Large,
	}
	for name, sz := range sizes {
		s := configtest.Generate(sz, "http://127.0.0.1:9/v1")
		for i := range s.Providers {
			s.Providers[i].Keys = []config.ProviderKey{{ID: int64(2*i + 1), Label: "primary", Fingerprint: "sk-…" + strings.Repeat("a", 4), Status: config.KeyActive}}
		}
		for i := range s.Callers {
			s.Callers[i].Keys = []config.CallerKey{{ID: int64(i + 1), Name: "ci", Prefix: "sy_0123"}}
		}
		if !config.WrittenByWriter(s) {
			t.Errorf("%s: some items were left to the library", name)
		}
		checkCodec(t, name, s)
		text, _ := config.Encode(s)
		if _, ok := config.ReadByReader(text); !ok {
			t.Errorf("%s: the reader refused an item of canonical text", name)
		}
	}
	checkCodec(t, "tricky", tricky())
	checkCodec(t, "empty", config.Snapshot{})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1500 {
		checkCodec(t, "variant "+string(rune('a'+i%26)), variant(rng, awkwardString(rng)))
	}
}

// TestCanonicalStyles: each awkward string, alone in a field, encodes as
// the library encodes it and reads back; the ones the writer renders
// itself are the ones expected.
func TestCanonicalStyles(t *testing.T) {
	for _, str := range awkward {
		s := config.Snapshot{Tenants: []config.Tenant{{Name: str, Description: str}}, Providers: []config.Provider{{Name: "p", PassHeaders: []string{str}}}}
		checkCodec(t, str, s)
		written := config.WrittenByWriter(s)
		// The writer leaves to the library only what needs a block scalar or escapes.
		wantWritten := utf8.ValidString(str) && !strings.ContainsFunc(str, func(r rune) bool {
			return r < 0x20 || r >= 0x7f && r < 0xa0 || r == 0x2028 || r == 0x2029 || r == 0xfeff || r > 0xfffd
		})
		if written != wantWritten {
			t.Errorf("%q: written by the writer %v, want %v", str, written, wantWritten)
		}
	}
}

// TestCanonicalReaderMatchesLibrary: texts edited line by line (values
// retyped, requoted, reindented, lines dropped, doubled, swapped,
// commented) are read as the library reads them, or refused as it refuses
// them.
func TestCanonicalReaderMatchesLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	base, err := config.Encode(tricky())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		text := base
		if i%3 == 0 {
			text, _ = config.Encode(variant(rng, awkwardString(rng)))
		}
		checkDecode(t, "edit", editLines(rng, text, awkwardString(rng)))
	}
}

// editLines makes one to three random edits to the lines of text.
func editLines(rng *rand.Rand, text []byte, str func() string) []byte {
	lines := strings.SplitAfter(string(text), "\n")
	for range 1 + rng.IntN(3) {
		i := rng.IntN(len(lines))
		l := lines[i]
		key, _, hasValue := strings.Cut(l, ": ")
		switch rng.IntN(10) {
		case 0: // a new value
			if hasValue {
				lines[i] = key + ": " + str() + "\n"
			}
		case 1: // a quoted value
			if hasValue {
				lines[i] = key + ": " + []string{"'", "\""}[rng.IntN(2)] + str() + []string{"'", "\""}[rng.IntN(2)] + "\n"
			}
		case 2: // another number or amount form
			if hasValue {
				lines[i] = key + ": " + []string{"007", "+5", "-0", "1_0", "0x10", "1e2", "2.50", "null", "~", "", "[]", "{}", "5 # five", "9223372036854775808", "1.0000001"}[rng.IntN(15)] + "\n"
			}
		case 3:
			lines[i] = " " + l
		case 4:
			lines[i] = strings.TrimPrefix(l, " ")
		case 5:
			lines = append(lines[:i], lines[i+1:]...)
		case 6:
			lines = append(lines[:i+1], lines[i:]...)
		case 7:
			if i+1 < len(lines) {
				lines[i], lines[i+1] = lines[i+1], lines[i]
			}
		case 8:
			lines[i] = strings.TrimSuffix(l, "\n") + " # note\n"
		case 9:
			lines[i] = strings.Replace(l, "- ", "-  ", 1)
		}
		if len(lines) == 0 {
			break
		}
	}
	return []byte(strings.Join(lines, ""))
}

// FuzzCanonicalCodec: a random snapshot holding the fuzzed string encodes
// to the library's bytes and reads back as the library reads it, and
// canonical text with the string put into a line reads as the library
// reads it.
func FuzzCanonicalCodec(f *testing.F) {
	for i, s := range awkward {
		f.Add(uint64(i), s)
	}
	f.Fuzz(func(t *testing.T, seed uint64, str string) {
		rng := rand.New(rand.NewPCG(seed, 5))
		pick := func() string {
			if rng.IntN(2) == 0 {
				return str
			}
			return awkward[rng.IntN(len(awkward))]
		}
		checkCodec(t, "variant", variant(rng, pick))
		text, err := config.Encode(variant(rng, pick))
		if err != nil {
			return
		}
		checkDecode(t, "edit", editLines(rng, text, pick))
	})
}

// largeSnapshot is configtest.Large with provider and caller keys, as the
// store holds it.
func largeSnapshot() config.Snapshot {
	s := configtest.Generate(configtest.Large, "http://127.0.0.1:9/v1")
	for i := range s.Providers {
		s.Providers[i].ID = int64(i + 1)
		s.Providers[i].Keys = []config.ProviderKey{{ID: int64(2*i + 1), Label: "primary", Fingerprint: "sk-…abcd", Status: config.KeyActive}, {ID: int64(2*i + 2), Label: "secondary", Fingerprint: "sk-…efgh", Status: config.KeyActive}}
	}
	return s
}

// BenchmarkEncode: the canonical text of the 500-group configuration, by
// the writer and (the reference) by the YAML library.
func BenchmarkEncode(b *testing.B) {
	s := largeSnapshot()
	for _, c := range []struct {
		name   string
		encode func(config.Snapshot) ([]byte, error)
	}{{"writer", config.Encode}, {"library", config.EncodeWithLibrary}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				text, err := c.encode(s)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(text)))
			}
		})
	}
}

// BenchmarkDecode: the same text read back, by the reader and by the library.
func BenchmarkDecode(b *testing.B) {
	text, err := config.Encode(largeSnapshot())
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		decode func([]byte) (config.Snapshot, error)
	}{{"reader", config.Decode}, {"library", config.DecodeWithLibrary}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, err := c.decode(text); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
