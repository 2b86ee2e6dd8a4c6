// Package filekind names the kind of a file that is not a regular one, for
// the errors of the code that refuses such files before opening them
// (difftest's bounded reads, the driver library path of package cuda).
package filekind

import "io/fs"

// Of names the kind of a file of mode m that is not regular, as an error
// message says it: "a folder", "a FIFO", "a character device", "a block
// device", "a socket", "a file of unknown type" (fs.ModeIrregular), or
// "not a regular file" for any other (a symbolic link not followed).
func Of(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeIrregular != 0:
		return "a file of unknown type"
	}
	return "not a regular file"
}
