"""LLM players: a language model behind an OpenAI-compatible server plays a seat.

The harness (``llm.harness``) is platform code, the same for every model: it turns the
referee's messages into prompts, asks the model (``llm.provider``), parses its answer
strictly and keeps every request and response (``llm.records``). ``sandboxes.llm`` makes
it a seat of the referee like any other. ``llm.local_server`` is a small OpenAI-compatible
server for tests, benchmarks and the demo. No Django here.
"""
