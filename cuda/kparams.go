// Kernel parameter layouts as a fatbin's images declare them, so a launcher
// can check that the bytes it packs are the bytes the kernel reads before
// anything runs.
//
// SASS (CUDA ELF): each entry point NAME has a section ".nv.info.NAME" of
// attribute records, little-endian, as nvcc 13.0 writes them and
// cuobjdump -elf prints them (no public specification; checked against
// cuobjdump's listing of this project's fatbin):
//
//	record: u8 format, u8 attribute, then by format:
//	  0x01 (no value), 0x02 (byte), 0x03 (half): a u16 value, 4 bytes in all
//	  0x04 (sized): u16 n, then n bytes
//	EIATTR_KPARAM_INFO (0x17, sized, 12 bytes), one per parameter:
//	  0 u32 index, 4 u16 ordinal, 6 u16 offset in the parameter buffer,
//	  8 u32 bits 18–31 size in bytes (bits 12–17 constant bank, 0–7 log2
//	    pointee alignment)
//
// PTX: ".entry NAME( .param <type> NAME_param_I[...] , ... )"; a parameter
// is ".b8 x[N]" (N bytes, as for a struct passed by value) or a scalar
// type (.u64, .s32, .f32, ...: its width), optionally ".ptr ..." and
// ".align A"; offsets follow the declared or natural alignment.

package cuda

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// KernelParam is one parameter of a kernel entry point as an image
// declares it.
type KernelParam struct {
	Ordinal int // position in the argument list, from 0
	Offset  int // byte offset in the kernel's parameter buffer
	Size    int // bytes
}

const (
	eifmtSized       = 0x04
	eiattrKParamInfo = 0x17
	nvInfoPrefix     = ".nv.info."
)

// ImageParams returns the parameters of every kernel entry point that the
// image im of fatbin declares, by entry name, in ordinal order. It reads
// SASS (the ELF's .nv.info.NAME sections) and PTX (the .entry
// declarations). Errors: a compressed image (its layout cannot be read
// without decompressing it), an image that is not a readable ELF or PTX, an
// attribute record that runs past its section, or parameters whose
// ordinals are not 0, 1, 2, ... without a gap.
func ImageParams(fatbin []byte, im FatbinImage) (map[string][]KernelParam, error) {
	if im.Compressed {
		return nil, fmt.Errorf("%s image: stored compressed; its parameter layout cannot be read (build with --compress-mode=none)", im.ArchName())
	}
	if im.Offset < 0 || im.Size < 0 || im.Offset+im.Size > len(fatbin) {
		return nil, fmt.Errorf("%s image: payload [%d,+%d) outside the %d-byte fatbin", im.ArchName(), im.Offset, im.Size, len(fatbin))
	}
	payload := fatbin[im.Offset : im.Offset+im.Size]
	var (
		out map[string][]KernelParam
		err error
	)
	switch im.Kind {
	case KindELF, KindELFAlt:
		out, err = elfParams(payload)
	case KindPTX:
		out, err = ptxParams(payload)
	default:
		return nil, fmt.Errorf("%s image: kind %s holds no kernels", im.ArchName(), im.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("%s image: %w", im.ArchName(), err)
	}
	for name, ps := range out {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Ordinal < ps[j].Ordinal })
		for i, p := range ps {
			if p.Ordinal != i {
				return nil, fmt.Errorf("%s image: %s: parameter ordinals %v, want 0, 1, 2, ... without a gap", im.ArchName(), name, ordinals(ps))
			}
		}
	}
	return out, nil
}

func ordinals(ps []KernelParam) []int {
	o := make([]int, len(ps))
	for i, p := range ps {
		o[i] = p.Ordinal
	}
	return o
}

// elfParams reads the KPARAM_INFO records of every .nv.info.NAME section.
// An entry point that takes no parameters has no records and is listed
// with none.
func elfParams(b []byte) (map[string][]KernelParam, error) {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("not a readable ELF: %w", err)
	}
	out := map[string][]KernelParam{}
	for _, s := range f.Sections {
		name, ok := strings.CutPrefix(s.Name, nvInfoPrefix)
		if !ok || name == "" {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", s.Name, err)
		}
		ps := []KernelParam{}
		for p := 0; p < len(data); {
			if len(data)-p < 4 {
				return nil, fmt.Errorf("section %s: offset %d: %d bytes left, a record needs 4", s.Name, p, len(data)-p)
			}
			format, attr := data[p], data[p+1]
			if format != eifmtSized {
				p += 4
				continue
			}
			n := int(binary.LittleEndian.Uint16(data[p+2:]))
			if p+4+n > len(data) {
				return nil, fmt.Errorf("section %s: offset %d: record of %d bytes runs past the section (%d bytes)", s.Name, p, n, len(data))
			}
			v := data[p+4 : p+4+n]
			p += 4 + n
			if attr != eiattrKParamInfo {
				continue
			}
			if n < 12 {
				return nil, fmt.Errorf("section %s: KPARAM_INFO record of %d bytes, want 12", s.Name, n)
			}
			ps = append(ps, KernelParam{
				Ordinal: int(binary.LittleEndian.Uint16(v[4:])),
				Offset:  int(binary.LittleEndian.Uint16(v[6:])),
				Size:    int(binary.LittleEndian.Uint32(v[8:]) >> 18),
			})
		}
		out[name] = ps
	}
	return out, nil
}

var (
	ptxEntry = regexp.MustCompile(`\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)`)
	ptxParam = regexp.MustCompile(`^\.param\s+(.*?)([A-Za-z_$][\w$]*)\s*(?:\[(\d+)\])?$`)
	ptxAlign = regexp.MustCompile(`\.align\s+(\d+)`)
	ptxType  = regexp.MustCompile(`\.(?:[bsuf](8|16|32|64))\b`)
)

// ptxParams reads the parameter lists of the .entry declarations of a PTX
// text (NUL padding after it is ignored). An entry with an empty list takes
// no parameters.
func ptxParams(b []byte) (map[string][]KernelParam, error) {
	text := string(bytes.TrimRight(b, "\x00"))
	out := map[string][]KernelParam{}
	for _, m := range ptxEntry.FindAllStringSubmatch(text, -1) {
		name, list := m[1], strings.TrimSpace(m[2])
		ps := []KernelParam{}
		off := 0
		if list != "" {
			for i, decl := range strings.Split(list, ",") {
				decl = strings.Join(strings.Fields(decl), " ")
				pm := ptxParam.FindStringSubmatch(decl)
				if pm == nil {
					return nil, fmt.Errorf("%s: parameter %d %q: not a .param declaration", name, i, decl)
				}
				tm := ptxType.FindStringSubmatch(pm[1])
				if tm == nil {
					return nil, fmt.Errorf("%s: parameter %d %q: no .b/.s/.u/.f type", name, i, decl)
				}
				width, _ := strconv.Atoi(tm[1])
				size, align := width/8, width/8
				if pm[3] != "" {
					n, err := strconv.Atoi(pm[3])
					if err != nil {
						return nil, fmt.Errorf("%s: parameter %d %q: array length: %w", name, i, decl, err)
					}
					size *= n
				}
				if am := ptxAlign.FindStringSubmatch(pm[1]); am != nil && !strings.Contains(pm[1], ".ptr") {
					align, _ = strconv.Atoi(am[1])
				}
				if align <= 0 {
					return nil, fmt.Errorf("%s: parameter %d %q: alignment %d", name, i, decl, align)
				}
				off = (off + align - 1) / align * align
				ps = append(ps, KernelParam{Ordinal: i, Offset: off, Size: size})
				off += size
			}
		}
		out[name] = ps
	}
	return out, nil
}
