# Everyday targets; each works from a fresh clone (they set up .venv as needed).
.PHONY: demo test setup lint format bench clean

demo:            ## set up, validate the reference players, play a round robin per game
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
