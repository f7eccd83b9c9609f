"""A corpus of bad inputs for every trace reader and the importer (see `corpus.py`)."""
