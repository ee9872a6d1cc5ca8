package fakevendor

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
)

// fillVector fills v with a unit-length vector derived from text alone: the
// same text always gives the same vector, different texts differ.
func fillVector(v []float32, text string) {
	// FNV-1a seeds a splitmix64 sequence.
	h := uint64(14695981039346656037)
	for i := 0; i < len(text); i++ {
		h ^= uint64(text[i])
		h *= 1099511628211
	}
	var norm float64
	for i := range v {
		h += 0x9e3779b97f4a7c15
		z := h
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		x := float64(int64(z)) / (1 << 63) // [-1, 1)
		v[i] = float32(x)
		norm += x * x
	}
	if norm == 0 {
		return
	}
	scale := 1 / math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) * scale)
	}
}

// Vector is the embedding the server returns for text at dimension dim, so
// tests can compare what a gateway relayed with what the vendor sent.
func Vector(text string, dim int) []float32 {
	v := make([]float32, dim)
	fillVector(v, text)
	return v
}

func appendFloatArray(b []byte, v []float32) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
	}
	return append(b, ']')
}

// appendBase64Vector is OpenAI's encoding_format=base64: little-endian
// float32s, base64 encoded, as a JSON string.
func appendBase64Vector(b []byte, v []float32) []byte {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, raw)
	return append(b, '"')
}

func shuffle(order []int) {
	if len(order) < 2 {
		return
	}
	for {
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for i, v := range order {
			if i != v {
				return // make sure the order really changed
			}
		}
	}
}
