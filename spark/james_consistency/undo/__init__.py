"""Taking a repair back from its before-images, and how long a repair stays undoable."""
