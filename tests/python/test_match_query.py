"""MatchQuery through the Python API: stored queries matched against each document."""

import lucille


def test_matching_queries_are_named_on_the_document() -> None:
    stage = lucille.stages.MatchQuery(
        fields=["content", "country"],
        matchedQueriesField="matched",
        queries=[
            {"both": "content:test AND content:giraffe"},
            {"either": "test giraffe"},
            {"japan": "country:japan OR country:jp"},
        ],
    )
    p = lucille.Pipeline([stage])
    out = p.process(lucille.Document("d", {"content": "A giraffe test", "country": "JP"}))[-1]
    assert out.get_list("matched") == ["both", "either", "japan"]
    out = p.process(lucille.Document("e", {"content": "nothing here"}))[-1]
    assert not out.has("matched")
