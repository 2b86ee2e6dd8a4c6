// A sequential stream of 32-bit words over Philox4x32-10 blocks, laid out
// so that each (tensor, row) of a case owns a disjoint counter range and can
// be generated independently and in parallel (Salmon et al. 2011:
// counter-based streams are split by partitioning the counter space).

package rng

// Stream reads Philox4x32-10 words in order. Block n of a stream is
//
//	Philox4x32(ctr = (uint32(n), uint32(n>>32), tensor, 0),
//	           key = (uint32(key), uint32(key>>32)))
//
// and its four words are consumed word 0 first. A stream created at block
// b reads blocks b, b+1, b+2, ...; kernels start row r of a tensor at block
// uint64(r)<<32, which leaves each row 2^32 blocks (2^34 words) before it
// would run into the next. The block counter wraps modulo 2^64. The zero
// Stream is not valid; use NewStream. A Stream is not safe for concurrent
// use; give each goroutine its own (per row).
type Stream struct {
	key    [2]uint32
	tensor uint32
	block  uint64    // the next block to compute
	buf    [4]uint32 // the current block's words
	used   int       // words of buf already returned (4: buf is spent)
}

// NewStream returns the stream of case key key, tensor index tensor (the
// input's position in the case's input list, fixed by each kernel's
// generator) and first block block.
func NewStream(key uint64, tensor uint32, block uint64) *Stream {
	return &Stream{
		key:    [2]uint32{uint32(key), uint32(key >> 32)},
		tensor: tensor,
		block:  block,
		used:   4,
	}
}

// Uint32 returns the next word of the stream.
func (s *Stream) Uint32() uint32 {
	if s.used == 4 {
		s.buf = Philox4x32([4]uint32{uint32(s.block), uint32(s.block >> 32), s.tensor, 0}, s.key)
		s.block++
		s.used = 0
	}
	w := s.buf[s.used]
	s.used++
	return w
}

// Uint64 returns the next two words as one value, the first word in the
// low half: uint64(w0) | uint64(w1)<<32.
func (s *Stream) Uint64() uint64 {
	lo := s.Uint32()
	hi := s.Uint32()
	return uint64(lo) | uint64(hi)<<32
}
