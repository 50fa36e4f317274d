# Everyday targets; each works from a fresh clone (they set up .venv as needed).
.PHONY: demo test setup lint format bench clean

demo:            ## validate the reference players, a round robin per game, then serve the site
	scripts/demo.sh

test:            ## set up and run the whole test suite (what CI runs)
	scripts/test.sh

setup:           ## create .venv with the pinned dependencies
	scripts/setup.sh

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

format:
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

bench:           ## moves/s: in-process, pipe ping-pong and through the referee
	.venv/bin/python -m bench.bench_referee

clean:
	rm -rf var .pytest_cache .ruff_cache
