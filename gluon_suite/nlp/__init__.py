"""Language: BERT on GluonNLP (models in the zoo, pretraining with MLM + NSP from plain text,
fine-tuning for GLUE-style classification and SQuAD-style extractive QA)."""
