"""New package of code with accuracy evaluaiton during training"""
