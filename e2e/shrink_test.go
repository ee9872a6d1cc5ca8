package e2e

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"sort"
)

// shrinkPNG makes a console screenshot small enough to commit: colours
// rounded to 4 bits a channel (flat UI colours barely move; anti-aliased
// text keeps its shape), then at most 256 of them in a palette, the most
// frequent ones, every other pixel taking its nearest. About a third of
// the size of Chromium's PNG.
func shrinkPNG(in []byte) ([]byte, error) {
	img, err := png.Decode(bytes.NewReader(in))
	if err != nil {
		return nil, err
	}
	r := img.Bounds()
	rgba, ok := img.(*image.NRGBA)
	if !ok {
		rgba = image.NewNRGBA(r)
		draw.Draw(rgba, r, img, r.Min, draw.Src)
	}
	// A colour rounded to 4 bits a channel is a 12-bit key.
	keys := make([]uint16, r.Dx()*r.Dy())
	var count [1 << 12]int
	for y := 0; y < r.Dy(); y++ {
		row := rgba.Pix[y*rgba.Stride:]
		for x := 0; x < r.Dx(); x++ {
			p := row[x*4:]
			k := uint16(p[0]>>4)<<8 | uint16(p[1]>>4)<<4 | uint16(p[2]>>4)
			keys[y*r.Dx()+x] = k
			count[k]++
		}
	}
	var used []uint16
	for k, n := range count {
		if n > 0 {
			used = append(used, uint16(k))
		}
	}
	sort.Slice(used, func(i, j int) bool {
		if count[used[i]] != count[used[j]] {
			return count[used[i]] > count[used[j]]
		}
		return used[i] < used[j]
	})
	rgb := func(k uint16) color.NRGBA {
		c := func(v uint16) uint8 { return uint8(v)<<4 | uint8(v) }
		return color.NRGBA{c(k >> 8 & 0xF), c(k >> 4 & 0xF), c(k & 0xF), 0xFF}
	}
	keep := used[:min(len(used), 256)]
	pal := make(color.Palette, len(keep))
	var index [1 << 12]uint8
	for i, k := range keep {
		pal[i], index[k] = rgb(k), uint8(i)
	}
	for _, k := range used[len(keep):] {
		index[k] = uint8(pal.Index(rgb(k)))
	}
	out := image.NewPaletted(image.Rect(0, 0, r.Dx(), r.Dy()), pal)
	for i, k := range keys {
		out.Pix[i] = index[k]
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
