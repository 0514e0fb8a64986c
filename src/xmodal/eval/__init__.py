"""Evaluation: metrics on score matrices, protocols (queries, gallery, relevance), statistics."""
