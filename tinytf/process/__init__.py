"""Process settings every stage applies: the allocator, the garbage collector, the CPU's facts."""
