package dlq

// KeeperLockKey is the keepers' advisory lock, for tests that hold it.
const KeeperLockKey = keeperLockKey
