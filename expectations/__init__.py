"""The Great Expectations suites, as reviewable JSON: shipped as package data of james_consistency.expectations
(pyproject.toml maps this folder there) and read by james_consistency.gates."""
