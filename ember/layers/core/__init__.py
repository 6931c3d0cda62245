"""Core layers: Dense, Activation, Dropout, Flatten, Reshape, Permute, RepeatVector, Identity, Lambda, Embedding,
InputLayer."""
