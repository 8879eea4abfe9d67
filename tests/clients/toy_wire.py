"""A toy provider wire, as a new one is added: this module and its line in ``registry.WIRES`` (the test
adds the line). It answers in process, and takes a key from TOY_API_KEY at its own API."""

from oracleladder.clients.fake import FakeProvider
from oracleladder.clients.openai_api import MODES
from oracleladder.clients.registry import ProviderSpec


def not_found(error: BaseException, where: str) -> str:
    return f"{where} has no toy model there"


WIRE = ProviderSpec("toy", lambda c: FakeProvider(lambda request: f"toy says {request.model}", name="toy"), MODES,
                    key_env=("TOY_API_KEY",), base_url="https://toy.example/v1", not_found=not_found)
