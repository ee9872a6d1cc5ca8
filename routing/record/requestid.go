package record

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// NewRequestID returns a new UUIDv7 (RFC 9562) in its canonical text form.
// Ids sort by creation time: the first 48 bits are the Unix time in
// milliseconds and the next 12 bits the sub-millisecond fraction (RFC 9562
// §6.2, method 3); the remaining 62 bits are random. Get uses the embedded
// time to look in the right partitions only.
func NewRequestID() string {
	return NewRequestIDAt(time.Now())
}

func NewRequestIDAt(t time.Time) string {
	var u [16]byte
	_, _ = rand.Read(u[:]) // crypto/rand.Read never returns an error

	ns := t.UnixNano()
	ms := uint64(ns / 1e6)
	frac := uint64(ns%1e6) * 4096 / 1e6 // 12 bits of sub-millisecond precision

	u[0] = byte(ms >> 40)
	u[1] = byte(ms >> 32)
	u[2] = byte(ms >> 24)
	u[3] = byte(ms >> 16)
	u[4] = byte(ms >> 8)
	u[5] = byte(ms)
	u[6] = 0x70 | byte(frac>>8) // version 7
	u[7] = byte(frac)
	u[8] = 0x80 | u[8]&0x3f // variant 10

	var s [36]byte
	hex.Encode(s[0:8], u[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], u[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], u[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], u[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], u[10:16])
	return string(s[:])
}

// RequestIDTime returns the creation time embedded in a UUIDv7 request id,
// to millisecond precision (sub-millisecond bits are ignored). ok is false
// when id is not a UUIDv7, for example an id a caller supplied.
func RequestIDTime(id string) (t time.Time, ok bool) {
	if len(id) != 36 || id[8] != '-' || id[13] != '-' || id[18] != '-' || id[23] != '-' {
		return time.Time{}, false
	}
	var u [16]byte
	compact := id[0:8] + id[9:13] + id[14:18] + id[19:23] + id[24:36]
	if _, err := hex.Decode(u[:], []byte(compact)); err != nil {
		return time.Time{}, false
	}
	if u[6]>>4 != 7 || u[8]>>6 != 2 {
		return time.Time{}, false
	}
	var ms int64
	for _, b := range u[0:6] {
		ms = ms<<8 | int64(b)
	}
	return time.UnixMilli(ms).UTC(), true
}
