# Everyday targets; each works from a fresh clone (they set up .venv as needed).
.PHONY: demo test setup base-image lint format docs docs-site bench bench-docker bench-upload bench-ladder bench-leaderboard bench-online bench-live bench-llm bench-hosts bench-jobs bench-pages bench-kaggle bench-soak bench-round-robin clean

demo:            ## validate the reference players, a round robin per game, then serve the site
	scripts/demo.sh

test:            ## set up and run the whole test suite (what CI runs)
	scripts/test.sh

setup:           ## create .venv with the pinned dependencies
	scripts/setup.sh

base-image:      ## the docker sandbox's base image (root: installs and starts Docker, debootstrap)
	scripts/setup.sh --system-packages
	.venv/bin/python manage.py build_base_image

lint:            ## ruff, and the layers contract (pyproject.toml, [tool.importlinter])
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/mypy
	.venv/bin/lint-imports

docs:            ## the documentation site, strict (broken links fail), into site/; then `mkdocs serve` to read it
	.venv/bin/python scripts/settings_table.py
	.venv/bin/mkdocs build --strict

docs-site:       ## the documentation site that the web site serves at /docs/ (into var/docs-site)
	NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --quiet --site-dir var/docs-site

format:
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

bench:           ## moves/s: in-process, pipe ping-pong and through the referee
	.venv/bin/python -m bench.bench_referee

bench-kaggle: .venv-kaggle/bin/python  ## matches/s: sandboxed duels against kaggle-environments' in-process ConnectX
	.venv/bin/python -m bench.bench_kaggle

# kaggle-environments in a virtualenv of its own: its dependencies are not Arena's.
.venv-kaggle/bin/python: bench/kaggle-requirements.txt
	.venv/bin/python -m venv --clear .venv-kaggle
	.venv-kaggle/bin/pip install --quiet --no-deps -r bench/kaggle-requirements.txt

bench-docker:    ## moves/s: agents in containers against host processes and attach streams
	.venv/bin/python -m bench.bench_docker

bench-upload:    ## seconds from upload to validated: docker and process sandboxes, with requirements
	.venv/bin/python -m bench.bench_upload

bench-ladder:    ## Kendall tau of the ladder and of round robins, 10 seeded runs end to end
	.venv/bin/python -m bench.bench_ladder

bench-leaderboard: ## a leaderboard refit against the online ratings of the same history
	.venv/bin/python -m bench.bench_leaderboard

bench-online:    ## online play: a network seat against a process seat, 200 agents at once, 1,000 idle streams
	.venv/bin/python -m bench.bench_online

bench-live:      ## moves/s with and without a duel's events published for spectators
	.venv/bin/python -m bench.bench_live

bench-llm:       ## LLM players: the harness's overhead per move, 50 LLM duels at once beside a hosted duel
	.venv/bin/python -m bench.bench_llm

bench-hosts:     ## duels/min with one worker host and with two (a second dockerd here; root)
	.venv/bin/python -m bench.bench_hosts

bench-jobs:      ## a round robin and upload to validated, before the jobs table (0dbc1bf) and now
	.venv/bin/python -m bench.bench_jobs

bench-pages:     ## the public pages: 32 readers through gunicorn on PostgreSQL, before (c91c05a) and now
	.venv/bin/python -m bench.bench_pages

bench-soak:      ## a 50-agent ladder for 30 min, a worker killed and the broker restarted (embedded)
	.venv/bin/python -m bench.bench_soak

bench-round-robin: ## a 16-agent round robin of 10-match duels on a fresh site, end to end (embedded)
	.venv/bin/python -m bench.bench_round_robin

clean:
	rm -rf var .pytest_cache .ruff_cache
