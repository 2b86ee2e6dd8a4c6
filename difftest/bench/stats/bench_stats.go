// Statistics of difftest bench: the median and quartiles of a sample of
// kernel times, a distribution-free confidence interval of the median, and
// the comparison of two samples as benchstat (golang.org/x/perf/cmd/benchstat,
// package benchmath) makes it: a Mann–Whitney U test for "is there a
// difference at all" (benchstat prints "~" where there is none at α =
// 0.05), and here also a confidence interval of the ratio of the two
// builds' times from the same test inverted (Hodges–Lehmann / Bauer 1972),
// so the interval excludes 1 exactly when the test finds a difference.
// Nothing here assumes a normal distribution: kernel times are skewed
// (a slow tail of clock ramps, preemptions and cache misses).

package stats

import (
	"math"
	"slices"
	"time"
)

// DefaultAlpha is the significance level of bench comparisons, benchstat's
// default: a difference is reported when the U test's p < 0.05.
const DefaultAlpha = 0.05

// Stats summarises one sample of times. Durations are nanoseconds in JSON.
type Stats struct {
	N      int           `json:"n"`
	Min    time.Duration `json:"min_ns"`
	Q1     time.Duration `json:"q1_ns"` // first quartile (linear interpolation, Quantile)
	Median time.Duration `json:"median_ns"`
	Q3     time.Duration `json:"q3_ns"`
	Max    time.Duration `json:"max_ns"`
	IQR    time.Duration `json:"iqr_ns"` // Q3 − Q1
	// MedianLo and MedianHi bound the median with at least 95 %
	// confidence (MedianCI); both 0 when N < 6, too few for any such
	// interval.
	MedianLo time.Duration `json:"median_lo_ns,omitempty"`
	MedianHi time.Duration `json:"median_hi_ns,omitempty"`
}

// Summarize returns the Stats of ts (any order; ts is not modified). An
// empty sample gives the zero Stats.
func Summarize(ts []time.Duration) Stats {
	if len(ts) == 0 {
		return Stats{}
	}
	xs := make([]float64, len(ts))
	for i, t := range ts {
		xs[i] = float64(t)
	}
	slices.Sort(xs)
	d := func(x float64) time.Duration { return time.Duration(math.Round(x)) }
	s := Stats{
		N: len(xs), Min: d(xs[0]), Max: d(xs[len(xs)-1]),
		Q1: d(Quantile(xs, 0.25)), Median: d(Quantile(xs, 0.5)), Q3: d(Quantile(xs, 0.75)),
	}
	s.IQR = s.Q3 - s.Q1
	if lo, hi, ok := MedianCI(xs, 0.95); ok {
		s.MedianLo, s.MedianHi = d(lo), d(hi)
	}
	return s
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of sorted, a sample in
// increasing order, by linear interpolation between the order statistics
// at rank h = (n−1)·q (Hyndman and Fan's type 7, the default of R and
// NumPy): the median of an even sample is the mean of its middle two. It
// returns NaN for an empty sample.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * q
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// MedianCI returns a distribution-free interval [sorted[k−1], sorted[n−k]]
// holding the population median with probability at least conf: the
// order statistics whose ranks a Binomial(n, ½) count of observations
// below the median falls between, k the largest rank with P(B ≤ k−1) ≤
// (1−conf)/2 (benchmath computes the same kind of interval). ok is false
// when n is too small for any such interval (n < 6 at conf 0.95).
func MedianCI(sorted []float64, conf float64) (lo, hi float64, ok bool) {
	n := len(sorted)
	tail := (1 - conf) / 2
	k, cum := 0, 0.0
	for j := 0; j <= n/2; j++ {
		// cum = P(B ≤ j)
		cum += math.Exp(lchoose(n, j) - float64(n)*math.Ln2)
		if cum > tail {
			break
		}
		k = j + 1
	}
	if k < 1 {
		return 0, 0, false
	}
	return sorted[k-1], sorted[n-k], true
}

// lchoose is log C(n, k).
func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// exactUMax bounds n1 + n2 for the exact null distribution of U: above it,
// or with ties, MannWhitney uses the normal approximation.
const exactUMax = 50

// MannWhitney is the two-sided Mann–Whitney U test of samples x and y
// (Wilcoxon rank-sum): u is U_x = R_x − n_x(n_x+1)/2, from the rank sum
// R_x of x in the pooled sample (ties take their mean rank), which counts
// the pairs (x_i, y_j) with x_i > y_j, a tie counting ½; p is the
// probability, under "both samples come from one distribution", of a U at
// least as far from n_x·n_y/2. Without ties and with n_x + n_y ≤ 50 p is
// exact (the null distribution counted by recursion); otherwise it is the
// normal approximation with the tie correction of the variance and a
// continuity correction of ½ (what scipy.stats.mannwhitneyu computes with
// method="asymptotic"). p is 1 when either sample is empty or every
// value is equal.
func MannWhitney(x, y []float64) (u, p float64) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return 0, 1
	}
	type obs struct {
		v    float64
		inX  bool
		rank float64
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v: v, inX: true})
	}
	for _, v := range y {
		all = append(all, obs{v: v})
	}
	slices.SortStableFunc(all, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	n := n1 + n2
	tieTerm := 0.0 // Σ (t³ − t) over groups of tied values
	for i := 0; i < n; {
		j := i
		for j < n && all[j].v == all[i].v {
			j++
		}
		r := float64(i+j+1) / 2 // mean of ranks i+1 … j
		for m := i; m < j; m++ {
			all[m].rank = r
		}
		t := float64(j - i)
		tieTerm += t*t*t - t
		i = j
	}
	rx := 0.0
	for _, o := range all {
		if o.inX {
			rx += o.rank
		}
	}
	u = rx - float64(n1)*float64(n1+1)/2
	if tieTerm == 0 && n <= exactUMax {
		// Two-sided: twice the smaller tail, at most 1.
		dist := uDistribution(n1, n2)
		lo := math.Min(u, float64(n1)*float64(n2)-u)
		tail := 0.0
		for k := 0; float64(k) <= lo; k++ {
			tail += dist[k]
		}
		return u, math.Min(1, 2*tail)
	}
	return u, uNormalP(u, n1, n2, tieTerm)
}

// uNormalP is the two-sided p of U = u for samples of n1 and n2 by the
// normal approximation: mean n1·n2/2, variance
// n1·n2/12 · (n+1 − Σ(t³−t)/(n(n−1))) with tieTerm = Σ(t³−t) over the
// groups of tied values, and |u − mean| reduced by ½ (continuity).
func uNormalP(u float64, n1, n2 int, tieTerm float64) float64 {
	n := n1 + n2
	mu := float64(n1) * float64(n2) / 2
	sigma2 := float64(n1) * float64(n2) / 12 * (float64(n+1) - tieTerm/(float64(n)*float64(n-1)))
	if sigma2 <= 0 {
		return 1
	}
	z := (math.Abs(u-mu) - 0.5) / math.Sqrt(sigma2)
	if z < 0 {
		z = 0
	}
	return math.Erfc(z / math.Sqrt2)
}

// uDistribution returns P(U = k), k = 0 … n1·n2, for samples of n1 and n2
// distinct values under the null hypothesis: the count of arrangements
// with U = k over C(n1+n2, n1), by the recursion
// c(m, n, k) = c(m−1, n, k−n) + c(m, n−1, k) (Mann and Whitney 1947).
func uDistribution(n1, n2 int) []float64 {
	// c[j][k] for the current m, j = 0 … n2.
	maxU := n1 * n2
	prev := make([][]float64, n2+1)
	for j := range prev {
		prev[j] = make([]float64, maxU+1)
		prev[j][0] = 1 // m = 0: one arrangement, U = 0
	}
	for m := 1; m <= n1; m++ {
		cur := make([][]float64, n2+1)
		for j := range cur {
			cur[j] = make([]float64, maxU+1)
		}
		cur[0][0] = 1 // n = 0
		for j := 1; j <= n2; j++ {
			for k := 0; k <= maxU; k++ {
				v := cur[j-1][k]
				if k-j >= 0 {
					v += prev[j][k-j]
				}
				cur[j][k] = v
			}
		}
		prev = cur
	}
	total := math.Exp(lchoose(n1+n2, n1))
	out := make([]float64, maxU+1)
	for k := range out {
		out[k] = prev[n2][k] / total
	}
	return out
}

// Comparison is a benchstat-style comparison of a new build's times with
// a baseline's.
type Comparison struct {
	// Ratio is median(new) / median(base): below 1 the new build is faster.
	Ratio float64 `json:"ratio"`
	// Lo and Hi bound the ratio of the two builds' times with 95 %
	// confidence (CompareTimes); both 0 when HasCI is false (too few runs).
	Lo    float64 `json:"ci_lo,omitempty"`
	Hi    float64 `json:"ci_hi,omitempty"`
	HasCI bool    `json:"has_ci"`
	// P is the two-sided p-value of the Mann–Whitney U test (MannWhitney).
	P float64 `json:"p"`
	// Significant is P < Alpha; benchstat prints "~" where it is false.
	Significant bool    `json:"significant"`
	Alpha       float64 `json:"alpha"`
	NBase       int     `json:"n_base"`
	NNew        int     `json:"n_new"`
}

// CompareTimes compares the times of a new build with a baseline's at
// significance alpha (0 means DefaultAlpha). The ratio is that of the
// medians (benchstat's center). Its interval is the Hodges–Lehmann
// interval of the shift of log times (Bauer 1972): the pairwise
// differences d = log new_j − log base_i sorted, and [d_(k), d_(mn+1−k)]
// with k the Mann–Whitney critical count at 1−alpha (from the exact null
// distribution where MannWhitney uses it, else the normal approximation),
// exponentiated; so it excludes 1 exactly when the U test rejects "no
// difference" at alpha (up to the approximation). Times must be
// positive. A sample with fewer than 2 values gives P = 1 and no interval.
func CompareTimes(base, new []time.Duration, alpha float64) Comparison {
	if alpha <= 0 {
		alpha = DefaultAlpha
	}
	c := Comparison{Alpha: alpha, NBase: len(base), NNew: len(new), P: 1}
	if len(base) == 0 || len(new) == 0 {
		return c
	}
	sb, sn := Summarize(base), Summarize(new)
	if sb.Median > 0 {
		c.Ratio = float64(sn.Median) / float64(sb.Median)
	}
	x, y := logs(base), logs(new)
	_, c.P = MannWhitney(x, y)
	c.Significant = c.P < alpha
	m, n := len(x), len(y)
	if m < 2 || n < 2 {
		return c
	}
	diffs := make([]float64, 0, m*n)
	for _, a := range x {
		for _, b := range y {
			diffs = append(diffs, b-a)
		}
	}
	slices.Sort(diffs)
	k := uCritical(x, y, alpha)
	if k >= 1 && k <= len(diffs)-k+1 {
		c.Lo, c.Hi, c.HasCI = math.Exp(diffs[k-1]), math.Exp(diffs[len(diffs)-k]), true
	}
	return c
}

// uCritical returns the largest k with P(U ≤ k−1) ≤ alpha/2 under the
// null hypothesis, for samples like x and y: from the exact distribution
// when MannWhitney would use it, else from the normal approximation
// (the variance without ties, and the continuity correction). 0
// means no interval exists at this alpha.
func uCritical(x, y []float64, alpha float64) int {
	m, n := len(x), len(y)
	ties := hasTies(append(append([]float64(nil), x...), y...))
	if !ties && m+n <= exactUMax {
		dist := uDistribution(m, n)
		k, cum := 0, 0.0
		for j := 0; j < len(dist); j++ {
			cum += dist[j]
			if cum > alpha/2 {
				break
			}
			k = j + 1
		}
		return k
	}
	// Normal: P(U ≤ k−1) ≈ Φ((k − 1 + ½ − mn/2) / σ) ≤ α/2.
	mu := float64(m) * float64(n) / 2
	sigma := math.Sqrt(float64(m) * float64(n) * float64(m+n+1) / 12)
	z := math.Sqrt2 * math.Erfinv(1-alpha)
	return int(math.Floor(mu - z*sigma + 0.5))
}

func hasTies(xs []float64) bool {
	slices.Sort(xs)
	for i := 1; i < len(xs); i++ {
		if xs[i] == xs[i-1] {
			return true
		}
	}
	return false
}

func logs(ts []time.Duration) []float64 {
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = math.Log(float64(max(t, 1)))
	}
	return out
}

// Geomean returns the geometric mean of positive values (benchstat's
// summary row), 0 for none.
func Geomean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}
