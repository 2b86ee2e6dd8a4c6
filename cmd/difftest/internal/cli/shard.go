package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/kerneldiff/kerneldiff/difftest"
	"github.com/kerneldiff/kerneldiff/difftest/suite"
)

// autoShard resolves --shard auto from this process's environment
// (suite.ShardFromEnv) and says on stderr which shard and why, so a
// job's log shows it.
func autoShard(stderr io.Writer) (difftest.Shard, error) {
	sh, desc, err := suite.ShardFromEnv(os.Getenv)
	if err != nil {
		return difftest.Shard{}, err
	}
	fmt.Fprintf(stderr, "difftest: --shard auto: shard %s from %s\n", sh, difftest.SafeText(desc))
	return sh, nil
}
