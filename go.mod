module github.com/kerneldiff/kerneldiff

go 1.26.8

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/NVIDIA/go-nvml v0.13.4-1
	github.com/google/go-cmp v0.7.0
	github.com/nlpodyssey/safetensors v0.0.0-20250209183917-bfb01cc25f7c
)

require golang.org/x/sys v0.50.0 // indirect
