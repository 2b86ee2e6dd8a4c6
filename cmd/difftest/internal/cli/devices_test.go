package cli

import (
	"reflect"
	"strings"
	"testing"
)

func TestDeviceFlag(t *testing.T) {
	for _, tc := range []struct {
		in      string
		device  int
		devices []int
		all     bool
	}{
		{"0", 0, nil, false},
		{"3", 3, nil, false},
		{"all", 0, nil, true},
		{"0,2,3", 0, []int{0, 2, 3}, false},
		{"2, 0", 2, []int{2, 0}, false},
	} {
		var f implFlags
		if err := (deviceFlag{&f}).Set(tc.in); err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if f.device != tc.device || !reflect.DeepEqual(f.devices, tc.devices) || f.allDevices != tc.all {
			t.Errorf("%q: device %d, devices %v, all %v", tc.in, f.device, f.devices, f.allDevices)
		}
		if got := (deviceFlag{&f}).String(); got != strings.ReplaceAll(tc.in, " ", "") {
			t.Errorf("%q: String() = %q", tc.in, got)
		}
	}
	for _, bad := range []string{"", "-1", "x", "0,0", "1,,2", "all,1"} {
		var f implFlags
		if err := (deviceFlag{&f}).Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	code, _, stderr := run(t, "run", "--impl", "reference", "--device", "0,0")
	if code != 2 || !strings.Contains(stderr, "device 0 given twice") {
		t.Errorf("--device 0,0: exit %d, %q", code, stderr)
	}
}
