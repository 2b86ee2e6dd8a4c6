// Package bench times kernels (difftest bench): cold-L2 kernel times
// against the copy-bandwidth floor, and the A/B comparison of two builds
// timed interleaved on the same inputs. Its statistics are the stdlib-only
// leaf difftest/bench/stats. Implementations that can time themselves
// implement KernelTimer (BaselineProvider for a second build,
// BandwidthMeter for the floor); kernels implement TrafficModel.
package bench
