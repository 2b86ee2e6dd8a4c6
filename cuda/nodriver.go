// The Driver returned when no driver library could be bound.

package cuda

import "time"

// noDriver answers every call with the error that Open met, which wraps
// ErrNoDriver.
type noDriver struct{ err error }

func (d noDriver) Init() error                                                { return d.err }
func (d noDriver) Version() (int, error)                                      { return 0, d.err }
func (d noDriver) DeviceCount() (int, error)                                  { return 0, d.err }
func (d noDriver) Device(int) (Device, error)                                 { return 0, d.err }
func (d noDriver) DeviceName(Device) (string, error)                          { return "", d.err }
func (d noDriver) DeviceAttribute(Device, Attribute) (int, error)             { return 0, d.err }
func (d noDriver) DeviceTotalMem(Device) (uint64, error)                      { return 0, d.err }
func (d noDriver) PrimaryCtxRetain(Device) (Context, error)                   { return 0, d.err }
func (d noDriver) PrimaryCtxRelease(Device) error                             { return d.err }
func (d noDriver) CtxSetCurrent(Context) error                                { return d.err }
func (d noDriver) CtxSynchronize() error                                      { return d.err }
func (d noDriver) MemAlloc(uint64) (DevicePtr, error)                         { return 0, d.err }
func (d noDriver) MemFree(DevicePtr) error                                    { return d.err }
func (d noDriver) MemcpyHtoD(DevicePtr, []byte) error                         { return d.err }
func (d noDriver) MemcpyDtoH([]byte, DevicePtr) error                         { return d.err }
func (d noDriver) MemcpyDtoD(DevicePtr, DevicePtr, uint64) error              { return d.err }
func (d noDriver) MemsetD8(DevicePtr, byte, uint64) error                     { return d.err }
func (d noDriver) ModuleLoadData([]byte) (Module, error)                      { return 0, d.err }
func (d noDriver) ModuleUnload(Module) error                                  { return d.err }
func (d noDriver) ModuleGetFunction(Module, string) (Function, error)         { return 0, d.err }
func (d noDriver) LaunchKernel(Function, Dim3, Dim3, uint32, ...[]byte) error { return d.err }
func (d noDriver) EventCreate() (Event, error)                                { return 0, d.err }
func (d noDriver) EventRecord(Event) error                                    { return d.err }
func (d noDriver) EventSynchronize(Event) error                               { return d.err }
func (d noDriver) EventElapsed(Event, Event) (time.Duration, error)           { return 0, d.err }
func (d noDriver) EventDestroy(Event) error                                   { return d.err }
