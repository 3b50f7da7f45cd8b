"""Issue 27: ``repr`` of a 5,000-row result printed every row (844 KB)."""

import sowlib


def test_repr_of_a_large_result_is_truncated() -> None:
    topic = sowlib.SowStore().create_topic("t", keys=["/k"])
    for k in range(5000):
        topic.publish({"k": k, "pad": "x" * 100})
    text = repr(topic.sow())
    assert len(text) < 5000
    assert "5000 records" in text
