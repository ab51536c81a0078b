"""Phone-number providers behind one interface: a sandbox and a commercial adapter."""
