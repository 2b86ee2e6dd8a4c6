package difftest

// ExitInternal is the exit code of a crash of difftest itself: a panic in
// the harness recovered at the top of the command line (README, exit
// codes). It is neither 2 (the user's input was bad) nor 125 (nothing
// could be tested here) nor a verdict: the harness has a bug, the stack is
// in a file named on stderr, and nothing the run would have said can be
// trusted. scripts/bisect-step skips the commit on it (125).
const ExitInternal = 3
