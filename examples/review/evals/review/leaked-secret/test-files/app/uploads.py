"""Upload rendered invoices to S3."""

import boto3

from app import settings


def _client():
    return boto3.client(
        "s3",
        region_name=settings.AWS_REGION,
        aws_access_key_id=settings.AWS_ACCESS_KEY_ID,
        aws_secret_access_key=settings.AWS_SECRET_ACCESS_KEY,
    )


def upload_invoice(invoice_id: str, pdf: bytes) -> str:
    if len(pdf) > settings.MAX_INVOICE_BYTES:
        raise ValueError(f"invoice {invoice_id} is too large")
    key = f"invoices/{invoice_id}.pdf"
    _client().put_object(
        Bucket=settings.INVOICE_BUCKET, Key=key, Body=pdf, ContentType="application/pdf"
    )
    return key
