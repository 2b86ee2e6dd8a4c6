// The parameter-layout check of a module file: before any worker starts,
// each image's declared kernel parameters (cuda.ImageParams) must match
// the C structs the launchers pack.

package bridge

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"

	"github.com/kerneldiff/kerneldiff/cuda"
)

// entryParam is the one parameter a launcher packs for an entry point: the
// kernel's C struct, passed by value.
type entryParam struct {
	Struct string // C type name
	Header string // the header that declares it, from the repository root
	Size   int    // sizeof as cgo compiled it, bytes
}

// entryParams lists every entry point the registered launchers
// (launchers.go) call, with the parameter they pack for it.
func entryParams() map[string]entryParam {
	m := map[string]entryParam{}
	for _, l := range launchers {
		for _, e := range l.Entries {
			m[e] = entryParam{l.Struct, l.Header, l.Size}
		}
	}
	return m
}

// checkFatbinParams checks, before anything runs, that each image of the
// module file at path (contents b: a fatbin, or a single cubin or PTX
// text, as cuModuleLoadData takes them) declares every entry point of
// entries that it defines with exactly one parameter, at offset 0, of the
// size the launcher packs. A kernel compiled from another version of its
// header would read a shifted or truncated struct; this names the image,
// the entry, both layouts and the fix. An entry an image does not define
// is not an error here (cuModuleGetFunction fails that kernel's cases),
// and a file that is none of the three is left to the driver, which
// rejects it with CUDA_ERROR_INVALID_IMAGE. Errors also come from a
// malformed fatbin container or an image whose layout cannot be read
// (cuda.ParseFatbin, cuda.ImageParams).
func checkFatbinParams(path string, b []byte, entries map[string]entryParam) error {
	var imgs []cuda.FatbinImage
	switch {
	case len(b) >= 4 && binary.LittleEndian.Uint32(b) == cuda.FatbinMagic:
		var err error
		if imgs, err = cuda.ParseFatbin(b); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	case bytes.HasPrefix(b, []byte(elf.ELFMAG)):
		imgs = []cuda.FatbinImage{{Kind: cuda.KindELF, Size: len(b)}}
	case bytes.Contains(b, []byte(".entry")):
		imgs = []cuda.FatbinImage{{Kind: cuda.KindPTX, Size: len(b)}}
	}
	for _, im := range imgs {
		decl, err := cuda.ImageParams(b, im)
		if err != nil {
			return fmt.Errorf("fatbin %s: %w", path, err)
		}
		names := make([]string, 0, len(decl))
		for name := range decl {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			want, ok := entries[name]
			if !ok {
				continue
			}
			ps := decl[name]
			if len(ps) == 1 && ps[0].Offset == 0 && ps[0].Size == want.Size {
				continue
			}
			got := make([]string, len(ps))
			for i, p := range ps {
				got[i] = fmt.Sprintf("%d bytes at offset %d", p.Size, p.Offset)
			}
			return fmt.Errorf("fatbin %s: %s image: %s takes %d parameter(s) [%s]; the launcher packs one %s of %d bytes (%s as this difftest was built): the fatbin and difftest come from different versions of the header; rebuild both (make kernels difftest)",
				path, im.ArchName(), name, len(ps), strings.Join(got, ", "), want.Struct, want.Size, want.Header)
		}
	}
	return nil
}
