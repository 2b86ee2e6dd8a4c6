package p

type reader struct{}

func (reader) Int(string, int) int          { return 0 }
func (reader) String(string, string) string { return "" }
func (reader) Other(string) int             { return 0 }
func (reader) Tables(string) []any          { return nil }

func read(p reader, name string) {
	p.Int("N", 1)
	p.String("preset", "v4")
	p.Int("N", 2) // repeat
	p.Tables("runs")
	p.Other("skip") // not a reader
	p.Int(name, 3)  // not a literal
}
