package main

func cmdCheck(args []string) error  { return nil }
func cmdRandom(args []string) error { return nil }
func cmdBench(args []string) error  { return nil }
