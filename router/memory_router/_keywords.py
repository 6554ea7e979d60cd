"""Placeholder: being implemented."""
def extract_keywords(query: str) -> list[str]:
    raise NotImplementedError


def build_match_query(query: str) -> str | None:
    raise NotImplementedError
