package config

// DecodeByItem exposes the item-by-item decoder to the tests.
func DecodeByItem(text []byte) (Snapshot, bool) { return decodeByItem(text, readerThenLibrary) }

// EncodeWithLibrary and DecodeWithLibrary are Encode and Decode with every
// item through the YAML library: the reference for the canonical writer
// and reader.
func EncodeWithLibrary(s Snapshot) ([]byte, error) { return encode(s, false) }
func DecodeWithLibrary(text []byte) (Snapshot, error) {
	return decode(text, libraryOnly)
}

// WrittenByWriter reports whether every item of s is written by the
// canonical writer (none left to the library).
func WrittenByWriter(s Snapshot) bool {
	c := Clone(s)
	Canonicalize(&c)
	ok := true
	check := func(write func(w *textWriter)) {
		w := textWriter{dash: true}
		write(&w)
		ok = ok && !w.bad
	}
	for i := range c.Tenants {
		check(func(w *textWriter) { writeTenant(w, 4, &c.Tenants[i]) })
	}
	for i := range c.Providers {
		check(func(w *textWriter) { writeProvider(w, 4, &c.Providers[i]) })
	}
	for i := range c.LogicModels {
		check(func(w *textWriter) { writeLogicModel(w, 4, &c.LogicModels[i]) })
	}
	for i := range c.RouteGroups {
		check(func(w *textWriter) { writeRouteGroup(w, 4, &c.RouteGroups[i]) })
	}
	for i := range c.Callers {
		check(func(w *textWriter) { writeCaller(w, 4, &c.Callers[i]) })
	}
	return ok
}

// ReadByReader decodes canonical text with every item read by the
// canonical reader; ok is false if the reader refused any.
func ReadByReader(text []byte) (Snapshot, bool) { return decodeByItem(text, readerOnly) }
