"""Releases of the inputs: the published PO-GP-UCB transform (uncertified) and the certified Gaussian release."""
