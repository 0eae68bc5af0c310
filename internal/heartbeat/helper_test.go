package heartbeat

const helperEnv = "HEARTBEAT_TEST_HELPER"

func helperMain(mode string) int { return 0 }
