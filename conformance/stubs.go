package main

func cmdRandom(args []string) error { return nil }
func cmdBench(args []string) error  { return nil }
