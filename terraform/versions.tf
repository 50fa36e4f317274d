# Terraform and provider versions. The terraform binary is not run in CI: the tests parse
# these files (python-hcl2) and check them statically (checkov); see README.md here.
terraform {
  required_version = ">= 1.9.0" # validations that read another variable

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.70"
    }
    random = {
      source  = "hashicorp/random"
      version = "~> 3.6"
    }
  }
}

provider "aws" {
  region = var.aws_region

  default_tags {
    tags = merge({ Project = "arena", Deployment = var.name }, var.tags)
  }
}

data "aws_partition" "current" {}

data "aws_caller_identity" "current" {}
