package proc

// NewServeImplHello is NewServeImpl with the hello time-out given.
var NewServeImplHello = newServeImpl
