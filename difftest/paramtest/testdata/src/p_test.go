package p

func readInTest(p reader) { p.Int("test_only", 0) }
