// Fatbin container parser: lists the images (SASS cubins and PTX) that an
// nvcc -fatbin output holds, and decides which of them a GPU can load.
//
// Layout (little-endian), as written by nvcc/fatbinary and read by
// cuobjdump; there is no public specification, this follows the layout
// documented by reverse-engineering write-ups of the format and checked
// against nvcc 13.0 output:
//
//	container header, 16 bytes:
//	  0  u32 magic 0xBA55ED50
//	  4  u16 version (1)
//	  6  u16 header size (16)
//	  8  u64 size of the entries that follow
//	entry header (header size ≥ 64; 80 or 112 for newer architectures):
//	  0  u16 kind: 1 PTX, 2 ELF (SASS cubin), 16 ELF (alternate tag)
//	  2  u16 entry format version (0x0101)
//	  4  u32 header size: the payload starts this many bytes after the entry
//	  8  u64 payload size, padded to 8 bytes: the next entry starts at
//	        entry + header size + payload size
//	 16  u32 compressed size (0 when stored plain)
//	 24  u16 code version minor, 26 u16 code version major (PTX ISA or ELF ABI)
//	 28  u32 architecture: 10·major + minor (90 = sm_90, 120 = sm_120)
//	 40  u64 flags
//	 56  u64 uncompressed payload size (0 when stored plain)
//
// A file may hold several containers back to back.

package cuda

import (
	"encoding/binary"
	"fmt"
)

// FatbinMagic opens every fatbin container.
const FatbinMagic = 0xBA55ED50

// ImageKind is what a fatbin entry holds.
type ImageKind uint16

// Entry kinds.
const (
	KindPTX    ImageKind = 1  // PTX text, JIT-compiled by the driver
	KindELF    ImageKind = 2  // SASS cubin for one architecture
	KindELFAlt ImageKind = 16 // SASS cubin, tag used by newer toolkits
)

// String returns "PTX", "SASS" or "kind(N)".
func (k ImageKind) String() string {
	switch k {
	case KindPTX:
		return "PTX"
	case KindELF, KindELFAlt:
		return "SASS"
	}
	return fmt.Sprintf("kind(%d)", uint16(k))
}

// FatbinImage is one entry of a fatbin.
type FatbinImage struct {
	Kind       ImageKind
	Arch       int // 10·major + minor: 90 for sm_90 / compute_90
	CodeMajor  int // PTX ISA version (PTX) or ELF ABI version (SASS)
	CodeMinor  int
	Offset     int    // payload offset in the file, bytes
	Size       int    // payload size as stored (compressed when Compressed)
	Compressed bool   // payload stored compressed (the driver decompresses)
	Flags      uint64 // raw entry flags
}

// ArchName returns "sm_90" for SASS and "compute_90" for PTX; for an
// image that came outside a fatbin (Arch 0: a lone cubin or PTX text),
// "cubin" or "PTX".
func (im FatbinImage) ArchName() string {
	if im.Arch == 0 {
		if im.Kind == KindPTX {
			return "PTX"
		}
		return "cubin"
	}
	if im.Kind == KindPTX {
		return fmt.Sprintf("compute_%d", im.Arch)
	}
	return fmt.Sprintf("sm_%d", im.Arch)
}

// ParseFatbin lists the images of every container in b. It returns an
// error naming the byte offset and the rule for a bad magic, a truncated
// header or an entry that runs past its container; an empty b is an error.
func ParseFatbin(b []byte) ([]FatbinImage, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("fatbin: empty file")
	}
	var out []FatbinImage
	le := binary.LittleEndian
	for pos := 0; pos < len(b); {
		if len(b)-pos < 16 {
			return nil, fmt.Errorf("fatbin: offset %d: %d trailing bytes, a container header needs 16", pos, len(b)-pos)
		}
		if m := le.Uint32(b[pos:]); m != FatbinMagic {
			return nil, fmt.Errorf("fatbin: offset %d: magic %#08x, want %#08x", pos, m, uint32(FatbinMagic))
		}
		hsize := int(le.Uint16(b[pos+6:]))
		body := le.Uint64(b[pos+8:])
		if hsize < 16 {
			return nil, fmt.Errorf("fatbin: offset %d: header size %d, must be ≥ 16", pos, hsize)
		}
		// Sizes are compared with the bytes left, never added first: a
		// size near 2^64 would wrap the sum and stall the loop.
		if left := len(b) - pos; hsize > left || body > uint64(left-hsize) {
			return nil, fmt.Errorf("fatbin: offset %d: container (%d-byte header, %d bytes of entries) runs past the end of the file (%d bytes)", pos, hsize, body, len(b))
		}
		end := pos + hsize + int(body)
		for e := pos + hsize; e < end; {
			if end-e < 64 {
				return nil, fmt.Errorf("fatbin: offset %d: %d bytes left in the container, an entry header needs 64", e, end-e)
			}
			ehsize := int(le.Uint32(b[e+4:]))
			psize := le.Uint64(b[e+8:])
			if ehsize < 64 {
				return nil, fmt.Errorf("fatbin: offset %d: entry header size %d, must be ≥ 64", e, ehsize)
			}
			if left := end - e; ehsize > left || psize > uint64(left-ehsize) {
				return nil, fmt.Errorf("fatbin: offset %d: entry payload of %d bytes runs past its container (ends at %d)", e, psize, end)
			}
			im := FatbinImage{
				Kind:      ImageKind(le.Uint16(b[e:])),
				CodeMinor: int(le.Uint16(b[e+24:])),
				CodeMajor: int(le.Uint16(b[e+26:])),
				Arch:      int(le.Uint32(b[e+28:])),
				Offset:    e + ehsize,
				Size:      int(psize),
				Flags:     le.Uint64(b[e+40:]),
			}
			if cs := le.Uint32(b[e+16:]); cs != 0 {
				im.Compressed = true
				im.Size = int(cs)
			}
			out = append(out, im)
			e += ehsize + int(psize)
		}
		pos = end
	}
	return out, nil
}

// LoadableImage picks the image a GPU of compute capability major.minor
// would run, following the CUDA compatibility rules: SASS for sm_XY runs
// on devices of the same major version and minor ≥ Y (preferring the
// closest); otherwise PTX for compute_XY with XY ≤ the device is JIT
// compiled (preferring the newest). ok is false when none fits, which is
// when cuModuleLoadData fails with CUDA_ERROR_NO_BINARY_FOR_GPU.
// Architecture-specific variants (sm_90a) are listed under their base
// number and treated like it.
func LoadableImage(images []FatbinImage, major, minor int) (im FatbinImage, ok bool) {
	dev := 10*major + minor
	best := -1
	for i, x := range images {
		if (x.Kind == KindELF || x.Kind == KindELFAlt) && x.Arch/10 == major && x.Arch <= dev {
			if best < 0 || x.Arch > images[best].Arch {
				best = i
			}
		}
	}
	if best >= 0 {
		return images[best], true
	}
	for i, x := range images {
		if x.Kind == KindPTX && x.Arch <= dev {
			if best < 0 || x.Arch > images[best].Arch {
				best = i
			}
		}
	}
	if best >= 0 {
		return images[best], true
	}
	return FatbinImage{}, false
}
