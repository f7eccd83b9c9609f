"""Job-duration predictors: features known at submission, time-ordered training, baselines,
gradient-boosted models with p50/p90 quantiles, model folders with a card, and exporters.

    from ddlx.predict import load_predictor
    predictor = load_predictor("ddlx-models/my-trace")
    predictions = predictor.predict(jobs)  # job_id, pred_s, p50_s, p90_s, model_id

See docs/predict.md for every definition.
"""

from __future__ import annotations

from ddlx.predict.artifacts import ModelFileError, Predictor, load_predictor, read_card
from ddlx.predict.export import EXPORT_FORMATS, ExportResult, export_predictions
from ddlx.predict.features import FEATURES, PredictError, frame_features
from ddlx.predict.metrics import METRICS, metrics_table
from ddlx.predict.models import TrainSettings
from ddlx.predict.training import TrainResult, train

__all__ = [
    "EXPORT_FORMATS", "ExportResult", "FEATURES", "METRICS", "ModelFileError", "PredictError", "Predictor",
    "TrainResult", "TrainSettings", "export_predictions", "frame_features", "load_predictor", "metrics_table",
    "read_card", "train",
]
